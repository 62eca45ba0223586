#!lua flags=no-writes
                return 1
            