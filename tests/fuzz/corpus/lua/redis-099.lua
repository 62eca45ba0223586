                print('some data')
            