# The shell side of experiments/common.py, sourced by the .sh experiments: each function runs
# common.py, so that the port choice, the /proc reading and the readiness test exist once.
# POSIX sh (server-vs-redis/run.sh runs under dash).
# REQUIRES: $root is the checkout's root, set before sourcing.

# A free TCP port on 127.0.0.1.
free_port() { python3 "$root/experiments/common.py" free-port; }

# utime + stime of pid $1 (all its threads), in clock ticks (getconf CLK_TCK per second).
cpu_ticks() { python3 "$root/experiments/common.py" cpu-ticks "$1"; }

# Returns 0 once port $1 answers PING; 1, with a line on stderr, if it does not within $2 seconds
# (default 10).
wait_ping() { python3 "$root/experiments/common.py" wait-ping "$@"; }
