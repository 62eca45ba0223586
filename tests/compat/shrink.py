"""Shrinks a diverging command sequence to a small reproducer (no server needed).

A sequence is a list of commands, a command a list of byte-string arguments. `still_fails(seq)`
says whether a candidate still shows the divergence; it is the only thing the shrinker knows.
Passes, repeated until none makes progress (or the budget of predicate calls runs out):
  1. commands: drop chunks of commands, halving the chunk size down to single commands;
  2. arguments: drop single arguments (never a command's fixed prefix, e.g. its name);
  3. values: replace an argument by a simpler one from SIMPLER (only ever shorter or earlier in
     that list, so the passes terminate);
  4. renames: replace every occurrence of one value at once (a key named by several commands).
Every accepted candidate satisfied still_fails, so the result does too.
"""

SIMPLER = [b"k1", b"a", b"0", b"1", b"", b"-1", b"2", b"b", b"k2"]


def _cost(arg):
    """Simplicity order of one argument: entries of SIMPLER first (in order), then by length."""
    try:
        return (0, SIMPLER.index(arg), 0)
    except ValueError:
        return (1, len(arg), arg)


def shrink(seq, still_fails, fixed_prefix=lambda cmd: 1, budget=2000):
    """Returns a sequence that still fails, no larger than seq. fixed_prefix(cmd) is how many
    leading arguments of cmd must stay (1: the command name; 2 with a subcommand)."""
    calls = [0]

    def test(cand):
        if calls[0] >= budget:
            return False
        calls[0] += 1
        return still_fails(cand)

    seq = [list(c) for c in seq]
    progress = True
    while progress and calls[0] < budget:
        progress = False
        # 1. Commands, ddmin-style: chunks of n/2, n/4 ... 1.
        chunk = max(1, len(seq) // 2)
        while chunk >= 1 and len(seq) > 1:
            i = 0
            while i < len(seq) and len(seq) > 1:
                cand = seq[:i] + seq[i + chunk :]
                if cand and test(cand):
                    seq = cand
                    progress = True
                else:
                    i += chunk
            if chunk == 1:
                break
            chunk //= 2
        # 2. Arguments, one at a time, from the end (trailing options go first).
        for ci in range(len(seq)):
            j = len(seq[ci]) - 1
            while j >= fixed_prefix(seq[ci]):
                cand = [list(c) for c in seq]
                del cand[ci][j]
                if test(cand):
                    seq = cand
                    progress = True
                j -= 1
        # 3. Values: the simplest replacement that still fails.
        for ci in range(len(seq)):
            for j in range(fixed_prefix(seq[ci]), len(seq[ci])):
                cur = _cost(seq[ci][j])
                for s in SIMPLER:
                    if _cost(s) >= cur:
                        break
                    cand = [list(c) for c in seq]
                    cand[ci][j] = s
                    if test(cand):
                        seq = cand
                        progress = True
                        break
        # 4. Renames: every occurrence of a value at once, so that a key shared by several
        # commands can be simplified although replacing one occurrence breaks the divergence.
        values = sorted({a for c in seq for a in c[fixed_prefix(c):]}, key=_cost, reverse=True)
        for v in values:
            for s in SIMPLER:
                if _cost(s) >= _cost(v):
                    break
                if any(s == a for c in seq for a in c[fixed_prefix(c):]):
                    continue  # would merge two distinct values
                cand = [c[: fixed_prefix(c)] + [s if a == v else a for a in c[fixed_prefix(c):]]
                        for c in seq]
                if test(cand):
                    seq = cand
                    progress = True
                    break
    return seq
