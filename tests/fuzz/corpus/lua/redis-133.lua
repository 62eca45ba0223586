#!lua
                return 1
            