#!/usr/bin/env bash
# Builds the fuzz targets with clang-14 and libFuzzer (ASan + UBSan) and runs each for a while.
#   tests/fuzz/run.sh [SECONDS_PER_TARGET] [BUILD_DIR]     (defaults: 60, build-fuzz)
# Each target starts from its checked-in seed corpus (tests/fuzz/corpus/TARGET) and a scratch
# copy grows in BUILD_DIR/corpus/TARGET. A crash leaves its input in BUILD_DIR/crash-*: fix the bug,
# then add the input to tests/fuzz/corpus/TARGET so that the regression test (`fuzz regression`
# in ./kvlab test, built with g++ and tests/fuzz/driver.cpp) runs it from then on.
# Needs Debian's clang-14 and libclang-rt-14-dev; exits 77 (skip) without them.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
seconds="${1:-60}"
out="${2:-$root/build-fuzz}"
cxx="$(command -v clang++-14 || true)"
if [ -z "$cxx" ] || [ ! -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  echo "skipped: needs clang-14 and libclang-rt-14-dev" >&2
  exit 77
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"  # absolute: the fuzzer runs inside it
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I"$root" -I"$out")
declare -A sources=(
  [resp_parser]="tests/fuzz/resp_parser_fuzz.cpp server/resp_parser.cpp server/strings_util.cpp"
)
status=0
for target in "${!sources[@]}"; do
  read -ra srcs <<<"${sources[$target]}"
  bin="$out/${target}_fuzz"
  echo "== $target: building $bin"
  (cd "$root" && "$cxx" "${flags[@]}" "${srcs[@]}" -o "$bin")
  mkdir -p "$out/corpus/$target"
  echo "== $target: fuzzing for ${seconds}s"
  if ! (cd "$out" && "$bin" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
        -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
        -dict="$root/tests/fuzz/resp.dict" "$out/corpus/$target" "$root/tests/fuzz/corpus/$target" \
        2>"$out/$target.log"); then
    echo "FAIL $target: see $out/$target.log and the crash-* input in $out" >&2
    tail -40 "$out/$target.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$out/$target.log" | tail -2
  fi
done
exit $status
