#!lua
            return 1
        