#!lua flags=allow-stale,no-writes
                return 1
            