"""The eval log: every LLM call of every sample of a run, with its prediction, gold and the scorer's decisions.

- `record`  runs beside the solver (in the driver, or inside a model replica): one `Recorder` per sample wraps the
            model, sees every request and answer, and travels back with the sample's result as plain JSON.
- `writer`  runs in the driver: appends each finished sample to a staging file (resume-safe), then compacts a
            finished config into Parquet with text shared by many calls stored once (`texts`, keyed by hash).
- `process` the writer's child process: the chunking, encoding and Parquet building, off the driver's GIL.
- `read`    loads a run's log for the viewer (`emocaustics.view`).
"""
