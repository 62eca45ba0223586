                dofile('some file')
            