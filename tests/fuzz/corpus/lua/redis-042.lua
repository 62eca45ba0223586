             local function unpack_to_list(t, i, j)
               local n, v = select('#', unpack(t, i, j)), {unpack(t, i, j)}
               for i = 1, n do v[i] = v[i] or '_NIL_' end
               v.n = n
               return v
             end

            return unpack_to_list({1,2,3}, -1, 5)
        