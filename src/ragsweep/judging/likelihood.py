"""Support as a likelihood ratio: how much more likely a local causal LM finds the claim once it has
read the passage.

For a claim of tokens t_1..t_n and a passage P, with the same prompt built with and without P:

    d_i = log p(t_i | prompt(P), t_<i) − log p(t_i | prompt(∅), t_<i)      (nats, per token)

The judge reduces d to one number s (`statistic`): `mean` = (1/n) Σ d_i; `min` = min_i d_i, meant to
catch one swapped number or name; `min2` = the mean of the two smallest d_i (one token when n = 1).
The score is the logistic p = 1 / (1 + exp(−scale · s)): 0.5 when the passage leaves the claim's
likelihood unchanged, above it when the passage makes the claim more likely. The mapping is monotone,
so ranking (ROC AUC) does not depend on `scale`; `ragsweep calibrate` picks the threshold on p.

For task "relevance" the question takes the claim's place: log p(question | passage) − log p(question),
i.e. how much the passage makes the question more predictable (pointwise mutual information, as in
PMI-based passage scoring); same statistics and mapping.

Measured on the shipped 250-claim set (claim score = max over its passages, SmolLM2-135M, ROC AUC):
mean 0.43, min 0.57, min2 0.57. The mean rewards copying the passage's words, which the hard negatives
(one changed number, name or word) do more than the paraphrases: it ranks them the wrong way round.
The minimum catches swapped names (0.72 against the supported claims) far better than numbers (0.62),
since the passage still lifts a wrong number a lot; negations stay below chance. Default: min.

Sources: the PMI / contrastive likelihood view of grounding (Holtzman et al., 2021, "Surface Form
Competition"; van der Poel et al., 2022, "Mutual Information Alleviates Hallucinations").
"""

from __future__ import annotations

import atexit
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ragsweep.cores import CoreShare
from ragsweep.generation.llama_cpp import llama_cpp, packaged_model
from ragsweep.judging.base import Pair, Verdict, check_threshold

log = logging.getLogger(__name__)

STATISTICS = ("mean", "min", "min2")
# Log-probabilities come from llama.cpp alone: without it, a judge that needs none
LLAMA_INSTEAD = "or choose another judge: judge=lexical, judge=embedding or judge=llm judge/generator=transformers"
# The text after which the claim (or question) is scored; the baseline drops the passage line.
PROMPTS = {"support": ("Passage: {passage}\n", "Claim:"),
           "relevance": ("Passage: {passage}\n", "A question this passage answers:")}


def reduce(diffs: np.ndarray, statistic: str) -> float:
    """One number from the per-token log-likelihood differences (see the module docstring)."""
    if statistic == "mean":
        return float(np.mean(diffs))
    lowest = np.sort(diffs)
    return float(lowest[0] if statistic == "min" else np.mean(lowest[:2]))


class LikelihoodJudge:
    """Scores a pair by the per-token log-likelihood gain a GGUF causal LM (llama.cpp) gets from the passage.

    Args:
        model_path: A .gguf file; null uses the llama_cpp generator's model (SmolLM2-135M-Instruct).
        statistic: min | min2 | mean over the claim's tokens (see the module docstring for their AUCs).
        scale: Slope of the logistic from nats to a probability (> 0); does not change the ranking.
        threshold: Score at which a claim counts as supported (set by `ragsweep calibrate`).
        n_ctx: Context window in tokens; a longer passage + claim is that pair's error.
        threads: CPU threads; null shares the cores among the processes embedding or generating. On an
            oversubscribed machine 1 is much faster than 2 (llama.cpp's threads spin-wait for each other).
        max_failure_rate: Share of failed pairs a run may have (checked by the runner).
    """

    preload = ("llama_cpp",)  # libraries its work imports (runner.workers)

    def __init__(self, model_path: str | None = None, statistic: str = "min", scale: float = 1.0,
                 threshold: float = 0.27, n_ctx: int = 2048, threads: int | None = None,
                 max_failure_rate: float = 0.05) -> None:
        if statistic not in STATISTICS:
            raise ValueError(f"judge.statistic must be one of {STATISTICS}, got {statistic!r}")
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale > 0:
            raise ValueError(f"judge.scale must be a number > 0 (slope per nat), got {scale!r}")
        check_threshold(threshold)
        if not isinstance(n_ctx, int) or n_ctx < 64:
            raise ValueError(f"judge.n_ctx must be an integer >= 64 (tokens), got {n_ctx!r}")
        if threads is not None and (not isinstance(threads, int) or threads <= 0):
            raise ValueError(f"judge.threads must be > 0 or null, got {threads!r}")
        if not 0.0 <= max_failure_rate <= 1.0:
            raise ValueError(f"judge.max_failure_rate must be a share in [0, 1], got {max_failure_rate!r}")
        self.model_path = str(Path(model_path).expanduser()) if model_path else str(packaged_model())
        if not Path(self.model_path).is_file():
            raise ValueError(f"judge.model_path={self.model_path} does not exist; point it at a .gguf file "
                             "or set it to null for the llama_cpp generator's model")
        self.statistic, self.scale, self.threshold = statistic, float(scale), float(threshold)
        self.n_ctx, self.threads, self.max_failure_rate = n_ctx, threads, float(max_failure_rate)
        self.cores = CoreShare()

    def preflight(self) -> None:
        """Load the model now, so a file llama.cpp cannot read fails before any work."""
        self._model()

    def judge(self, pairs: Sequence[Pair]) -> list[Verdict]:
        return [self._verdict(result) for result in self.token_logprobs(pairs)]

    def token_logprobs(self, pairs: Sequence[Pair]) -> list[tuple[np.ndarray, np.ndarray] | str]:
        """Per pair, log p(t_i | prompt with passage) and log p(t_i | prompt without) for the claim's
        tokens, or why the pair failed. Baselines come first, once per distinct claim; then the pairs
        in passage order, so consecutive evaluations reuse the passage's KV cache."""
        model = self._model()
        baselines: dict[tuple[str, str], np.ndarray | str] = {}
        results: list[tuple[np.ndarray, np.ndarray] | str] = [""] * len(pairs)
        with self.cores.threaded():
            for key in tqdm(dict.fromkeys((p.task, p.claim) for p in pairs), desc="likelihood baselines",
                            unit="claim", disable=len(pairs) < 50):
                baselines[key] = self._attempt(model, PROMPTS[key[0]][1], key[1])
            order = sorted(range(len(pairs)), key=lambda i: (pairs[i].task, pairs[i].passage))
            for i in tqdm(order, desc="likelihood judge", unit="pair", disable=len(pairs) < 50):
                task, claim, passage = pairs[i].task, pairs[i].claim, pairs[i].passage.strip()
                baseline = baselines[(task, claim)]
                head, tail = PROMPTS[task]
                given = self._attempt(model, head.format(passage=passage) + tail, claim) if passage else baseline
                results[i] = given if isinstance(given, str) else baseline if isinstance(baseline, str) else (given, baseline)
        return results

    def _verdict(self, result: tuple[np.ndarray, np.ndarray] | str) -> Verdict:
        if isinstance(result, str):
            return Verdict(None, "error", result)
        statistic = reduce(result[0] - result[1], self.statistic)
        return Verdict(float(1.0 / (1.0 + np.exp(-self.scale * statistic))), "ok", f"{self.statistic}={statistic:.4f}")

    def _attempt(self, model, prompt: str, claim: str) -> np.ndarray | str:
        """The claim's token log-probabilities after `prompt`, or an error message (never raises)."""
        threads = self.threads or self.cores.threads()  # re-read per pair: the share changes as others start/stop
        llama_cpp().llama_set_n_threads(model.ctx, threads, threads)
        if not claim.strip():
            return "the claim is empty"
        target = model.tokenize((" " + claim.strip()).encode(), add_bos=False, special=False)
        try:
            return self._logprobs(model, self._context(model, prompt), target)
        except (ValueError, RuntimeError) as error:  # too long for n_ctx, or llama.cpp failed to decode
            return str(error)

    @staticmethod
    def _context(model, text: str) -> list[int]:
        return model.tokenize(text.encode(), add_bos=True, special=False)

    def _logprobs(self, model, context: list[int], target: list[int]) -> np.ndarray:
        """log p(target_i | context, target_<i) for each target token, reusing the KV cache of the
        longest prefix shared with the previous call (same passage, or the baseline's prompt)."""
        tokens = context + target
        if len(tokens) > self.n_ctx:
            raise ValueError(f"passage and claim are {len(tokens)} tokens, over judge.n_ctx={self.n_ctx}; "
                             "raise judge.n_ctx or use shorter chunks")
        previous = model.input_ids[: model.n_tokens]
        shared = int(np.argmin(np.append(previous[: len(tokens)] == tokens[: len(previous)], False)))
        model.n_tokens = min(shared, len(tokens) - 1)  # llama.cpp drops the KV cache after n_tokens
        try:
            model.eval(tokens[model.n_tokens:])
        except Exception:
            model.reset()
            raise
        logits = model.scores[len(context) - 1: len(tokens) - 1].astype(np.float64)
        top = logits.max(axis=1)
        log_z = top + np.log(np.exp(logits - top[:, None]).sum(axis=1))
        return logits[np.arange(len(target)), target] - log_z

    def _model(self):
        key = (self.model_path, self.n_ctx, "logits_all")
        if key not in _MODELS:
            Llama = llama_cpp(LLAMA_INSTEAD).Llama

            log.info("loading %s for the likelihood judge (n_ctx=%d)", self.model_path, self.n_ctx)
            try:
                threads = self.threads or self.cores.threads()
                _MODELS[key] = Llama(model_path=self.model_path, n_ctx=self.n_ctx, logits_all=True,
                                     n_threads=threads, n_threads_batch=threads, verbose=False)
            except ValueError as error:
                raise ValueError(f"judge.model_path={self.model_path}: llama.cpp cannot load it ({error})") from None
        return _MODELS[key]


_MODELS: dict[tuple, object] = {}  # loaded once per process: every job of a sweep judges with one model


@atexit.register
def _close_models() -> None:
    """Free the models before the interpreter tears down llama_cpp (see generation.llama_cpp)."""
    while _MODELS:
        _MODELS.popitem()[1].close()
