RUNS=5 bash benchmarks/device_bench.sh 2>&1 | grep -v "^import time" | tail -12
bash benchmarks/device_explain_live.sh 2>&1 | grep -E "MISS|live cases|took"
