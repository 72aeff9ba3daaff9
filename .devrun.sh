# usage: bash .devrun.sh GROUP  (one device call; each step with its own timeout; logs in $OUT)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:/tmp/site || exit
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
T0=$(date +%s); BUDGET=${BUDGET:-560}
step() { # step NAME TIMEOUT CMD...
  local name=$1 t=$2; shift 2
  local left=$(( BUDGET - ($(date +%s) - T0) ))
  if [ $left -lt 30 ]; then echo "SKIP $name (no time)" | tee -a $OUT/skipped.txt; return; fi
  [ $t -gt $left ] && t=$left
  echo "=== $name (timeout $t)"; timeout $t "$@" 2>&1 | tee $OUT/$name.log; echo "=== $name done at $(( $(date +%s)-T0 )) s"
}
as() { step as_$1 $2 python3 benchmarks/autoschedule.py --cases $1 --trials ${3:-16} --out-dir $OUT/as; }
case $1 in
rows)
  step rowops_32768 200 python3 benchmarks/row_operators.py --no-compile --cases softmax4096x32768 --variants "default,256 threads,512 threads,1024 threads,vector slices at 1024 threads and the row read again,vector slices at 256 threads and the row read again"
  as softmax4096x32768 170; as softmax4096 100; as rmsnorm7239 100 ;;
rows2)
  as rmsnorm1 100; as layernorm1024 110; as gelu8192 110; as softmax8192x1024 90; as softmax1x151936 90 ;;
gemm)
  as gemm4000x1000 150; as gemm2048x8192 130; as linear4096 130 12; as batched8x1024 130 12 ;;
decode)
  step decode 300 python3 benchmarks/decode_rows.py
  step ffn333 100 python3 benchmarks/ffn_bf16.py --shape 333,12288,4096 --no-compile
  step ffn7239 100 python3 benchmarks/ffn_bf16.py --shape 7239,12288,4096 --no-compile ;;
probe)
  step rowops_32768b 120 python3 benchmarks/row_operators.py --no-compile --cases softmax4096x32768 --variants "1024 threads,one thread combines at 1024 threads,one thread combines at 512 threads,512 threads"
  as softmax4096x32768 160
  step decode16 220 python3 benchmarks/decode_rows.py --cases 16x12288x4096,1x4096x12288
  as ffn16 100 16; as ffndown1 100 16 ;;
m16)
  step decode16b 200 python3 benchmarks/decode_rows.py --cases 16x12288x4096 ;;
seeds)
  as ffndown1 100 16; as ffn16 100 16 ;;
tests)
  step gputests 300 env TCOMP_TEST_GPU=1 python3 -m pytest -q -m gpu tests -n 12 -p no:cacheprovider
  as ffn1 150 12 ;;
esac
[ -d $OUT/as ] && (cd $OUT && tar czf as_$1.tgz as && rm -rf as)
ls $OUT
