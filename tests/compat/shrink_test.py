"""Unit test of the shrinker with fake divergence predicates (no server)."""
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shrink import shrink  # noqa: E402


def noise(rng, n):
    words = [b"SET", b"GET", b"DEL", b"SADD", b"LPUSH", b"HSET"]
    return [[rng.choice(words)] + [b"k%d" % rng.randrange(6) for _ in range(rng.randrange(4))]
            for _ in range(n)]


class ShrinkTest(unittest.TestCase):
    def test_keeps_only_the_two_commands_that_make_the_divergence(self):
        # Diverges when some SET of key x to a non-number comes before an INCR of x.
        def fails(seq):
            seen = False
            for c in seq:
                if c[0] == b"SET" and len(c) >= 3 and c[1] == b"x" and not c[2].isdigit():
                    seen = True
                if c[0] == b"INCR" and len(c) >= 2 and c[1] == b"x" and seen:
                    return True
            return False

        rng = random.Random(7)
        seq = noise(rng, 20) + [[b"SET", b"x", b"hello world", b"EX", b"100"]] + noise(rng, 15)
        seq += [[b"INCR", b"x", b"extra"]] + noise(rng, 10)
        self.assertTrue(fails(seq))
        out = shrink(seq, fails)
        self.assertTrue(fails(out))
        self.assertEqual(out, [[b"SET", b"x", b"k1"], [b"INCR", b"x"]])

    def test_simplifies_arguments_and_never_drops_the_fixed_prefix(self):
        calls = []

        def fails(seq):
            calls.append(seq)
            return any(c[:2] == [b"OBJECT", b"ENCODING"] and b"nan" in c for c in seq)

        seq = noise(random.Random(1), 8) + [[b"OBJECT", b"ENCODING", b"zz", b"nan", b"1e308"]]
        out = shrink(seq, fails, fixed_prefix=lambda c: 2 if c[0] == b"OBJECT" else 1)
        self.assertEqual(out, [[b"OBJECT", b"ENCODING", b"nan"]])
        for cand in calls:
            for c in cand:
                self.assertGreaterEqual(len(c), 2 if c[0] == b"OBJECT" else 1)

    def test_renames_a_key_shared_by_several_commands(self):
        # Diverges when the key pushed to is the one inserted into, whatever its name.
        def fails(seq):
            pushed = {c[1] for c in seq if c[0] == b"LPUSH" and len(c) > 1}
            return any(c[0] == b"LINSERT" and len(c) > 1 and c[1] in pushed for c in seq)

        seq = [[b"LPUSH", b"\x00b\xff", b"x"], [b"GET", b"zz"], [b"LINSERT", b"\x00b\xff", b"q"]]
        self.assertEqual(shrink(seq, fails), [[b"LPUSH", b"k1"], [b"LINSERT", b"k1"]])

    def test_a_divergence_in_every_command_leaves_one_command(self):
        out = shrink(noise(random.Random(3), 30), lambda seq: len(seq) >= 1)
        self.assertEqual(len(out), 1)
        self.assertEqual(len(out[0]), 1)

    def test_stops_at_its_budget_with_a_failing_sequence(self):
        n = [0]

        def fails(seq):
            n[0] += 1
            return sum(len(c) for c in seq) >= 5

        seq = noise(random.Random(5), 40)
        out = shrink(seq, fails, budget=25)
        self.assertLessEqual(n[0], 25)
        self.assertTrue(fails(out))



class ExecAllowListTest(unittest.TestCase):
    """compare() lets an EXEC inherit the allow-listing of a command it ran (COPY ... DB 1 is
    allow-listed alone; inside MULTI its reply arrives in EXEC's array)."""

    class Gen:
        @staticmethod
        def name_of(cmd):
            return cmd[0].decode().lower()

    def test_exec_of_an_allow_listed_command_is_allowed_and_others_are_not(self):
        import compat  # noqa: E402 (imported here: only this test needs the tester)
        allow = compat.AllowList(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                              "allowlist.txt"))
        redis, kvlab = ("replies", (("int", 0),)), ("replies", (("error", b"ERR DB index"),))
        seq = [[b"MULTI"], [b"COPY", b"a", b"b", b"DB", b"1"], [b"EXEC"]]
        res = compat.compare(self.Gen, allow, "exec", seq[2], 2, redis, kvlab, seq)
        self.assertEqual(res[0], "allowed")
        seq = [[b"COPY", b"a", b"b", b"DB", b"1"], [b"MULTI"], [b"GET", b"a"], [b"EXEC"]]
        res = compat.compare(self.Gen, allow, "exec", seq[3], 3, redis, kvlab, seq)
        self.assertEqual(res[0], 3)  # the COPY before MULTI was not queued: a real divergence
        # A nested MULTI is refused inside the transaction; the COPY before it is still queued.
        seq = [[b"MULTI"], [b"COPY", b"a", b"b", b"DB", b"1"], [b"MULTI"], [b"EXEC"]]
        res = compat.compare(self.Gen, allow, "exec", seq[3], 3, redis, kvlab, seq)
        self.assertEqual(res[0], "allowed")


class ReplyAllowListTest(unittest.TestCase):
    """A "reply:" rule matches Redis's error text, not the arguments: Redis 7.0's stale-errno SORT
    error is allowed, a kvlab error on the same command is not."""

    def test_a_reply_rule_matches_redis_error_only(self):
        import compat  # noqa: E402
        allow = compat.AllowList(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                              "allowlist.txt"))
        cmd = [b"SORT", b"k1", b"LIMIT", b"0", b"0"]
        bug = ("replies", (("error", b"ERR One or more scores can't be converted into double"),))
        empty = ("replies", (("array", ()),))
        res = compat.compare(ExecAllowListTest.Gen, allow, "sort", cmd, 0, bug, empty)
        self.assertEqual(res[0], "allowed")
        res = compat.compare(ExecAllowListTest.Gen, allow, "sort", cmd, 0, empty, bug)
        self.assertEqual(res[0], 0)  # kvlab refusing what Redis sorts is a divergence
        other = ("replies", (("error", b"ERR syntax error"),))
        res = compat.compare(ExecAllowListTest.Gen, allow, "sort", cmd, 0, other, empty)
        self.assertEqual(res[0], 0)


class NormalizeTest(unittest.TestCase):
    """Replies whose order Redis leaves unspecified compare as sets; their other parts do not."""

    def test_stream_clock_readings_compare_within_a_second_and_nothing_else_does(self):
        import compat  # noqa: E402

        def full(seen, name=b"c1"):
            consumer = ("array", (("bulk", b"name"), ("bulk", name), ("bulk", b"seen-time"),
                                  ("int", seen)))
            group = ("array", (("bulk", b"consumers"), ("array", (consumer,))))
            return ("array", (("bulk", b"length"), ("int", 1), ("bulk", b"groups"),
                              ("array", (group,))))
        cmd = [b"XINFO", b"STREAM", b"k", b"FULL"]
        a = compat.normalize("xinfo|stream", full(1796424438483), cmd)
        self.assertTrue(compat.same(a, compat.normalize("xinfo|stream", full(1796424438468), cmd)))
        self.assertFalse(compat.same(a, compat.normalize("xinfo|stream", full(1796424440483),
                                                         cmd)))
        self.assertFalse(compat.same(a, compat.normalize("xinfo|stream",
                                                         full(1796424438483, b"c2"), cmd)))
        # XPENDING's extended form: the idle of [id, consumer, idle, count] is a clock reading,
        # the delivery count is not.
        def pend(idle, count):
            return ("array", (("array", (("bulk", b"1-0"), ("bulk", b"c"), ("int", idle),
                                         ("int", count))),))
        x = [b"XPENDING", b"k", b"g", b"-", b"+", b"10"]
        self.assertTrue(compat.same(compat.normalize("xpending", pend(5, 1), x),
                                    compat.normalize("xpending", pend(40, 1), x)))
        self.assertFalse(compat.same(compat.normalize("xpending", pend(5, 1), x),
                                     compat.normalize("xpending", pend(5, 2), x)))

    def test_sunsubscribe_alone_compares_channels_as_a_set_and_counts_in_order(self):
        import compat  # noqa: E402

        def unsub(*pairs):
            return ("replies", tuple(("array", (("bulk", b"sunsubscribe"), ("bulk", ch),
                                                 ("int", n))) for ch, n in pairs))
        a = compat.normalize("sunsubscribe", unsub((b"k1", 1), (b"0", 0)), [b"SUNSUBSCRIBE"])
        b = compat.normalize("sunsubscribe", unsub((b"0", 1), (b"k1", 0)), [b"SUNSUBSCRIBE"])
        c = compat.normalize("sunsubscribe", unsub((b"0", 0), (b"k1", 1)), [b"SUNSUBSCRIBE"])
        self.assertTrue(compat.same(a, b))
        self.assertFalse(compat.same(a, c))  # counts must still fall 1, 0
        # With channels named, the order is the arguments': compared as is.
        named = [b"SUNSUBSCRIBE", b"k1", b"0"]
        self.assertFalse(compat.same(compat.normalize("sunsubscribe", unsub((b"k1", 1), (b"0", 0)), named),
                                     compat.normalize("sunsubscribe", unsub((b"0", 1), (b"k1", 0)), named)))

    def test_sort_alpha_ties_at_a_nul_are_unordered_and_other_orders_are_not(self):
        import compat  # noqa: E402

        def arr(*xs):
            return ("replies", (("array", tuple(("bulk", x) for x in xs)),))
        cmd = [b"SORT_RO", b"k2", b"ALPHA"]
        # normalize() sees one command's reply; unwrap as compare() does.
        one = lambda r: r[1][0]
        a = compat.normalize("sort_ro", one(arr(b"-9", b"a\0b", b"a", b"b")), cmd)
        b = compat.normalize("sort_ro", one(arr(b"-9", b"a", b"a\0b", b"b")), cmd)
        c = compat.normalize("sort_ro", one(arr(b"-9", b"b", b"a", b"a\0b")), cmd)
        self.assertTrue(compat.same(a, b))
        self.assertFalse(compat.same(a, c))
        plain = lambda *xs: compat.normalize("sort_ro", one(arr(*xs)), cmd)
        self.assertFalse(compat.same(plain(b"a", b"b"), plain(b"b", b"a")))

    def test_sort_by_with_alpha_is_unordered_and_numeric_sort_by_is_not(self):
        import compat  # noqa: E402
        self.assertEqual(compat.sort_unsorted([b"SORT", b"k", b"BY", b"w_*", b"ALPHA"]), "set")
        self.assertEqual(compat.sort_unsorted([b"SORT", b"k", b"BY", b"w_*", b"ALPHA", b"LIMIT",
                                               b"0", b"2"]), "shape")
        self.assertIsNone(compat.sort_unsorted([b"SORT", b"k", b"BY", b"w_*"]))
        self.assertIsNone(compat.sort_unsorted([b"SORT", b"k", b"ALPHA"]))


if __name__ == "__main__":
    unittest.main()
