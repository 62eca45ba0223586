            math.randomseed(ARGV[1]); return tostring(math.random())
        