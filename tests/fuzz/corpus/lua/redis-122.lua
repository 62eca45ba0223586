#!lua badger=data
                return 1
            