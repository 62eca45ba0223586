                    redis.set_repl(redis.REPL_ALL);
                