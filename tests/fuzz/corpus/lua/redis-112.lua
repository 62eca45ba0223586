                redis.call('set','foo','bar');
                return redis.replicate_commands();
            