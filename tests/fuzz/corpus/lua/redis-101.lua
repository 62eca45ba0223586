            -- Generate 1gb '==...==' separator
            local s = string.rep('=', 1024 * 1024)
            local t = {} for i=1,1024 do t[i] = s end
            local sep = table.concat(t)
            collectgarbage('collect')

            local code = table.concat({'return [',sep,'[x]',sep,']'})
            collectgarbage('collect')

            -- Load the code and run it. Script will return the string length.
            -- Escape sequence: [=....=[ to ]=...=] will be ignored
            -- Actual string is a single character: 'x'. Script will return 1
            local func = loadstring(code)
            return #func()
        