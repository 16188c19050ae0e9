"""The out-of-process machinery: running probes concurrently (runner), commands with timeouts
and budgets (subproc), child-process workers (worker, trt_smoke), problem records, the on-disk cache and atomic file writes."""
