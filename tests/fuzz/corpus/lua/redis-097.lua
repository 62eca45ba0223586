                loadfile('some file')
            