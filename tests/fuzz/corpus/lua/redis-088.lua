            return loadstring(string.dump(function() return 1 end))()
        