"""Question sets made from a user's own documents: passages sampled, questions drafted by a generator,
excerpts located as exact spans, and each draft screened by filters whose verdicts the report shows.
The pieces here are pure; `ragsweep.runner.generate` wires them to the generator, embedder,
reference retriever and judge.
"""
