                redis = function() return 1 end
            