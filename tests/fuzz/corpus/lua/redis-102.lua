           local s = string.rep('\n', 1024 * 1024)
           local t = {} for i=1,2048 do t[#t+1] = s end
           local lines = table.concat(t)
           local fn, err = loadstring(lines)
           return err
        