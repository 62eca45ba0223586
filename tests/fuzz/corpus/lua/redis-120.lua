#!not-lua
                return 1
            