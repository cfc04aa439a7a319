"""Prices (`prices` in the config) and what a question's calls cost, by hand."""

from __future__ import annotations

import pytest

from ragsweep.metrics.costs import Call, Prices, cost_per_question


def test_a_call_costs_its_tokens_at_its_models_price_and_a_local_ones_seconds_too():
    prices = Prices.from_config({"models": {"gpt-4o": {"input": 2.5, "output": 10}, "small": {"input": 0.1}},
                                 "cpu_second": 0.01})
    remote = Call("gpt-4o", True, prompt_tokens=1000, completion_tokens=200, seconds=3.0)
    assert prices.of(remote) == pytest.approx(1000 * 2.5 / 1e6 + 200 * 10 / 1e6)  # an endpoint's time is not ours
    local = Call("small", False, prompt_tokens=1000, completion_tokens=200, seconds=3.0)
    assert prices.of(local) == pytest.approx(1000 * 0.1 / 1e6 + 0.01 * 3.0)
    assert prices.of(Call(None, False, seconds=0.5)) == pytest.approx(0.005)  # embedding and searching a question
    assert cost_per_question([[remote, local], [], [Call(None, False, seconds=2)]], prices) == pytest.approx(
        [prices.of(remote) + prices.of(local), 0.0, 0.02])
    assert Prices.from_config(None).of(remote) == 0.0 and Prices.from_config({}).of(local) == 0.0


def test_a_remote_model_without_a_price_is_named():
    prices = Prices.from_config({"models": {"gpt-4o": {"input": 2.5, "output": 10}}})
    calls = [Call("gpt-4o", True, 10, 10), Call("mistral", True, 10, 10), Call("SmolLM2", False, 10, 10)]
    assert prices.unpriced(calls) == ["mistral"]


@pytest.mark.parametrize(("prices", "message"), [
    ({"cpu_second": -1}, "prices.cpu_second=-1: give a price >= 0"),
    ({"cpu_second": "cheap"}, "prices.cpu_second='cheap'"),
    ({"cpu_second": True}, "prices.cpu_second=True"),
    ({"models": {"gpt-4o": {"input": float("nan")}}}, "prices.models.gpt-4o.input=nan"),
    ({"models": {"gpt-4o": {"input": 1, "completion": 2}}}, "prices.models.gpt-4o.completion: unknown key"),
    ({"gpu_hour": 2}, "prices.gpu_hour: unknown key"),
])
def test_a_bad_price_is_refused_in_one_line_naming_its_key(prices, message):
    with pytest.raises(ValueError, match=message.replace(".", r"\.").replace("(", r"\(")) as error:
        Prices.from_config(prices)
    assert "\n" not in str(error.value)
