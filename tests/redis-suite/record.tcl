# Loaded by Redis's test framework right after its own tests/support/util.tcl (run.py puts a
# two-line util.tcl in the work directory that sources both), in the test server and in the test
# client. It wraps `test` so that every test writes its own record, in the client process, to the
# file named by $KVLAB_RS_RECORDS:
#
#   block <TAB> n                               start_server was called for the n-th time
#   raise <TAB> n <TAB> <TAB> error             block n raised outside any test (below)
#   start <TAB> - <TAB> name                    when the test begins (run.py's hang watchdog)
#   ok|err|skip|ignore|exception <TAB> us <TAB> name <TAB> first line of the failure
#
# A test is known by its name and occurrence (1 for the first test of that name in the unit, 2
# for the next, ...), since some units run the same tests twice (scripting.tcl: for FCALL, then
# for EVAL). The tests listed in $KVLAB_RS_SKIP as `occurrence <TAB> name` lines are not run and
# recorded as `skip` (run.py reruns a unit without the tests that hung or crashed the server;
# the framework's own --skiptest would skip every occurrence). An occurrence `*` means all of
# them, and `* <TAB> /regexp` every test whose name matches (the framework's convention).
#
# The outcome is read from the framework's own counters (num_passed, num_failed, ...), so it is
# exactly what the framework decided; the time is the wall time of the test's body in microseconds
# (the framework's "(N ms)" figure is rounded to whole milliseconds, too coarse for a 3x rule),
# less the first retry delay of each wait_for_condition (below). The
# records come from one process in order, written and flushed line by line, unlike the framework's
# stdout, where the test server's and the client's buffered output interleave.

if {[info exists ::env(KVLAB_RS_RECORDS)] && [info commands ::kvlab_rs_test] eq ""} {
    set ::kvlab_rs_fd [open $::env(KVLAB_RS_RECORDS) a]
    fconfigure $::kvlab_rs_fd -translation lf -encoding utf-8 -buffering line

    proc kvlab_rs_escape {s} {
        string map [list "\\" "\\\\" "\t" "\\t" "\n" "\\n" "\r" "\\r"] $s
    }

    proc kvlab_rs_write {status us name {msg ""}} {
        puts $::kvlab_rs_fd [join [list $status $us [kvlab_rs_escape $name] \
                                       [kvlab_rs_escape [string range $msg 0 400]]] "\t"]
    }

    set ::kvlab_rs_skip [dict create]
    if {[info exists ::env(KVLAB_RS_SKIP)] && $::env(KVLAB_RS_SKIP) ne ""} {
        set f [open $::env(KVLAB_RS_SKIP) r]
        fconfigure $f -encoding utf-8
        foreach line [split [read $f] "\n"] {
            if {$line ne ""} { dict set ::kvlab_rs_skip $line 1 }
        }
        close $f
    }
    set ::kvlab_rs_seen [dict create]

    # Against an external server every start_server block begins with FLUSHALL, so a test
    # depends on nothing that ran before its block: run.py's reruns skip earlier blocks' tests.
    set ::kvlab_rs_block 0
    rename start_server ::kvlab_rs_start_server
    # An error that escapes a block outside any test (with --durable, errors inside tests are
    # failures) would end the framework and every later block with it: a CONFIG SET of the
    # block's overrides that the server refuses (appendonly yes), the FLUSHALL it starts with.
    # It is recorded (a `raise` line) and the framework goes on with the next block, with its
    # stack of servers and tags as they were before this block; the block's tests did not run.
    proc start_server {options {code undefined}} {
        incr ::kvlab_rs_block
        set block $::kvlab_rs_block
        kvlab_rs_write block $block ""
        set servers $::servers
        set tags $::tags
        set rc [catch {uplevel 1 [list ::kvlab_rs_start_server $options $code]} res opts]
        if {$rc == 1} {
            kvlab_rs_write raise $block "" $res
            foreach srv [lrange $::servers [llength $servers] end] {
                if {[dict exists $srv client]} { catch {[dict get $srv client] close} }
            }
            set ::servers $servers
            set ::tags $tags
            return
        }
        return -options $opts $res
    }

    # A test that waits for state another connection creates (wait_for_blocked_client: a
    # deferred client's BLPOP, then INFO on the test's own connection) polls with
    # wait_for_condition. Nothing orders two connections' commands: on Redis's one thread the
    # BLPOP, sent first, is nearly always read first; on a multi-threaded server it runs on
    # another worker and the first look can come a few microseconds too early, which then costs
    # the poll's whole delay (100 ms) and makes a 1 ms test look 100 times slower. So each wait
    # credits the test with at most one delay: a second look that still fails, which is a slow
    # server, counts in full.
    set ::kvlab_rs_grace 0
    rename wait_for_condition ::kvlab_rs_wait_for_condition
    proc wait_for_condition {maxtries delay e _else_ elsescript} {
        set t0 [clock microseconds]
        # uplevel: the framework's proc evaluates the condition and elsescript one level up.
        set rc [catch {uplevel 1 [list ::kvlab_rs_wait_for_condition \
                                      $maxtries $delay $e $_else_ $elsescript]} res opts]
        set dt [expr {[clock microseconds] - $t0}]
        # A wait shorter than one delay found its condition at the first look: no credit.
        if {$dt >= $delay * 1000} { incr ::kvlab_rs_grace [expr {int($delay * 1000)}] }
        return -options $opts $res
    }

    rename test ::kvlab_rs_test
    proc kvlab_rs_skipped {name occurrence} {
        if {[dict exists $::kvlab_rs_skip "$occurrence\t$name"] ||
            [dict exists $::kvlab_rs_skip "*\t$name"]} {
            return 1
        }
        foreach line [dict keys $::kvlab_rs_skip] {
            if {[string match "*\t/*" $line] &&
                [regexp -- [string range $line 3 end] $name]} {
                return 1
            }
        }
        return 0
    }

    proc test {name code {okpattern undefined} {tags {}}} {
        dict incr ::kvlab_rs_seen $name
        if {[kvlab_rs_skipped $name [dict get $::kvlab_rs_seen $name]]} {
            kvlab_rs_write skip 0 $name "skipped by run.py"
            return
        }
        set passed $::num_passed
        set failed $::num_failed
        set skipped $::num_skipped
        set aborted $::num_aborted
        kvlab_rs_write start - $name
        # The time starts where the framework starts its own clock, when it reports the test as
        # `testing` (send_data_packet, defined by test_helper.tcl after this file is loaded, so
        # wrapped here): not before, where it opens a connection of its own to log the test's
        # name with DEBUG LOG, which is the framework's cost, not the test's.
        if {[info commands ::kvlab_rs_send] eq ""} {
            rename ::send_data_packet ::kvlab_rs_send
            proc ::send_data_packet {fd status data {elapsed 0}} {
                if {$status eq "testing"} { set ::kvlab_rs_t0 [clock microseconds] }
                ::kvlab_rs_send $fd $status $data $elapsed
            }
        }
        set ::kvlab_rs_t0 [clock microseconds]
        set ::kvlab_rs_grace 0
        # uplevel: the framework's `test` evaluates the body one level up, in our caller's frame.
        set rc [catch {uplevel 1 [list ::kvlab_rs_test $name $code $okpattern $tags]} res opts]
        set us [expr {max(0, [clock microseconds] - $::kvlab_rs_t0 - $::kvlab_rs_grace)}]
        set msg ""
        if {$rc == 1} {
            set status exception
            set msg $res
        } elseif {$::num_passed > $passed} {
            set status ok
        } elseif {$::num_failed > $failed} {
            set status err
            # The framework drops the first 10 characters of every error, meant for the
            # "assertion:" prefix; other errors (an error reply) keep their whole text as the
            # first line of the errorInfo it appends.
            set details [lindex $::tests_failed end]
            set msg [lindex $details 1]
            if {[llength $details] > 2} {
                set msg [lindex [split [lindex $details 2] "\n"] 0]
            }
        } elseif {$::num_skipped > $skipped} {
            set status skip
        } elseif {$::num_aborted > $aborted} {
            set status ignore
        } else {
            set status exception
            set msg "no outcome recorded"
        }
        kvlab_rs_write $status $us $name $msg
        return -options $opts $res
    }
}
