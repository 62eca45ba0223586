#!lua flags=allow-oom,what?
                return 1
            