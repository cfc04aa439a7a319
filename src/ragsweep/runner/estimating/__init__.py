"""What a sweep's jobs will ask their models and spend, before they run: `ragsweep estimate` and `budget`.

Each job is taken as far as its model calls: its chunks and rankings are made (and cached, as the job itself
would make them), and the cache keys of its rewrites and answers computed. A call the stage cache holds counts the
tokens and seconds it took, as the run will log it; a call it lacks is predicted by `CallPredictor` from the calls
of the same stage and model that it holds, or, with none held, from the prompt's cl100k tokens and the generator's
`max_tokens` (a bound: marked rough). No model is asked, unless a `sample` of questions is to be asked first (their
calls cached, as the run would make them, and the job's other calls scaled by them, with a 95% interval; grown,
given a margin the sweep's figures must be known within), and nothing of the estimate is stored. A question
whose rewrite is not cached is searched as asked, so its answer's prompt holds passages of the same size. The
judges' calls are estimated as answers are; an answer still to be made is taken to have as many claims as the
known ones.

`calls` holds a call's records (`Held`, `Planned`), `job_calls` a job's calls, `sampling` the questions asked
first, `prediction` the prediction of a missing call, `pricing` a job's calls priced, `estimates` what an estimate
says, `intervals` its 95% intervals, `sweep` the sweep's estimate (`SweepEstimator`), `budget` the `budget` setting.
"""
