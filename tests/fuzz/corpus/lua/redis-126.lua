#!lua flags=
                return 1
            