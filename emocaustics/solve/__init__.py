"""Task-neutral solving machinery: typed asks with retries (`ask`), answer schemas and validation (`schema`), and the
per-sample solver plan that runs any task's `solve` next to the engine (`plan`)."""
