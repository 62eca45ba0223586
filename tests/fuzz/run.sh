#!/usr/bin/env bash
# Builds the fuzz targets with clang-14 and libFuzzer (ASan + UBSan) and runs each for a while.
#   tests/fuzz/run.sh [SECONDS_PER_TARGET] [BUILD_DIR] [TARGET...]   (defaults: 60, build-fuzz, all)
# Each target starts from its checked-in seed corpus (tests/fuzz/corpus/TARGET) and a scratch
# copy grows in BUILD_DIR/corpus/TARGET. A crash leaves its input in BUILD_DIR/crash-*: fix the bug,
# then add the input to tests/fuzz/corpus/TARGET so that the regression test (`fuzz regression`
# in ./kvlab test, built with g++ and tests/fuzz/driver.cpp) runs it from then on.
# Objects are compiled one source at a time into BUILD_DIR/obj (through ccache when installed, two
# at a time), so the targets share them and a rebuild after a small change is cheap.
# Needs Debian's clang-14 and libclang-rt-14-dev; exits 77 (skip) without them.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
seconds="${1:-60}"
out="${2:-$root/build-fuzz}"
shift $(( $# < 2 ? $# : 2 ))
cxx="$(command -v clang++-14 || true)"
if [ -z "$cxx" ] || [ ! -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  echo "skipped: needs clang-14 and libclang-rt-14-dev" >&2
  exit 77
fi
mkdir -p "$out/obj"
out="$(cd "$out" && pwd)"  # absolute: the fuzzer runs inside it
launcher=()
if command -v ccache >/dev/null; then
  launcher=(ccache)
  export CCACHE_NOHASHDIR=true CCACHE_BASEDIR="$root"
fi
# The headers meson generates (meson.build): admin.cpp and info.cpp include them.
version="$(sed -n "s/^ *version: '\([^']*\)'.*/\1/p" "$root/meson.build" | head -1)"
printf '#pragma once\n#define KVLAB_VERSION "%s"\n#define KVLAB_SOURCE_ROOT "%s"\n#define KVLAB_HAVE_HIREDIS 0\n' \
  "$version" "$root" >"$out/kvlab_config.hpp.new"
sha="$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
printf '#pragma once\n#define KVLAB_GIT_SHA "%s"\n' "$sha" >"$out/kvlab_git.hpp.new"
for h in kvlab_config.hpp kvlab_git.hpp; do  # rewritten only when changed (keeps ccache hits)
  cmp -s "$out/$h.new" "$out/$h" 2>/dev/null || mv "$out/$h.new" "$out/$h"
  rm -f "$out/$h.new"
done
# structures/backends.hpp is generated from structures/backends.list when Meson configures: a
# configure-only Meson directory (no build) gives the same header as the main build's.
if [ ! -f "$out/gen/structures/backends.hpp" ] ||
   [ "$root/structures/backends.list" -nt "$out/gen/structures/backends.hpp" ] ||
   [ "$root/structures/backends.hpp.in" -nt "$out/gen/structures/backends.hpp" ]; then
  rm -rf "$out/gen"
  meson setup "$out/gen" "$root" >"$out/gen.log" 2>&1 || { cat "$out/gen.log" >&2; exit 1; }
fi
cflags=(-std=c++20 -O1 -g -mcx16 -fsanitize=fuzzer-no-link,address,undefined
        -fno-sanitize-recover=undefined -DKVLAB_SERVER_MALLOC='"libc"'
        -I"$root" -I"$out" -I"$out/gen" -I/usr/include/lua5.1)
ldflags=(-fsanitize=fuzzer,address,undefined)

# The server library without main.cpp and keyspace_factory.cpp (tests/fuzz/fuzz_keyspace.cpp
# stands in for it), and the structures it needs (not registry.cpp: it instantiates every backend).
server_srcs=($(cd "$root" && find server -name '*.cpp' | sort |
                grep -v -e '^server/main\.cpp$' -e '^server/data/keyspace_factory\.cpp$')
  structures/common/cds_runtime.cpp structures/common/hash.cpp structures/common/pool.cpp
  structures/reclaim/epoch.cpp tests/fuzz/fuzz_keyspace.cpp)
declare -A sources=(
  [resp_parser]="tests/fuzz/resp_parser_fuzz.cpp server/protocol/resp_parser.cpp server/util/strings_util.cpp"
  [reply_writer]="tests/fuzz/reply_writer_fuzz.cpp server/util/strings_util.cpp"
  [glob]="tests/fuzz/glob_fuzz.cpp server/util/strings_util.cpp"
  [command]="tests/fuzz/command_fuzz.cpp ${server_srcs[*]}"
  [lua]="tests/fuzz/lua_fuzz.cpp ${server_srcs[*]}"
)
declare -A libs=(
  [command]="-llua5.1-cjson -llua5.1-bitop -llua5.1 -lcrypto -ltbb -lxxhash -lcds -lpthread"
  [lua]="-llua5.1-cjson -llua5.1-bitop -llua5.1 -lcrypto -ltbb -lxxhash -lcds -lpthread"
)
# -max_len per target: the command target's inputs are pipelines of many commands; the glob
# target's reach past 1000 runs of '*' (2000 bytes) while its reference matcher stays quick.
declare -A max_len=([resp_parser]=4096 [reply_writer]=4096 [command]=16384 [lua]=8192 [glob]=3000)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(resp_parser reply_writer command lua glob)

status=0
for target in "${targets[@]}"; do
  read -ra srcs <<<"${sources[$target]}"
  bin="$out/${target}_fuzz"
  echo "== $target: building $bin"
  objs=()
  for s in "${srcs[@]}"; do objs+=("$out/obj/${s//\//_}.o"); done
  printf '%s\n' "${srcs[@]}" | (cd "$root" && xargs -P 2 -I{} sh -c \
    'o="$0/obj/$(echo "$1" | tr / _).o"; '"${launcher[*]:-} $cxx ${cflags[*]@Q}"' -c "$1" -o "$o"' \
    "$out" {})
  "$cxx" "${ldflags[@]}" "${objs[@]}" ${libs[$target]:-} -o "$bin"
  dict="$root/tests/fuzz/$target.dict"
  [ -f "$dict" ] || dict="$root/tests/fuzz/resp.dict"
  mkdir -p "$out/corpus/$target"
  # Redis's own scripts as extra seeds, from the Debian source package when it is cached (its
  # text is not checked in; tests/fuzz/make_lua_corpus.py).
  redis_tcl=/var/cache/kvlab-redis-src/src/tests/unit/scripting.tcl
  if [ "$target" = lua ] && [ -f "$redis_tcl" ]; then
    /usr/bin/python3 "$root/tests/fuzz/make_lua_corpus.py" --redis "$out/corpus/lua" "$redis_tcl"
  fi
  echo "== $target: fuzzing for ${seconds}s"
  if ! (cd "$out" && "$bin" -max_total_time="$seconds" -max_len="${max_len[$target]}" -timeout=10 \
        -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
        -dict="$dict" "$out/corpus/$target" "$root/tests/fuzz/corpus/$target" \
        2>"$out/$target.log"); then
    echo "FAIL $target: see $out/$target.log and the crash-* input in $out" >&2
    tail -40 "$out/$target.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$out/$target.log" | tail -2
  fi
done
exit $status
