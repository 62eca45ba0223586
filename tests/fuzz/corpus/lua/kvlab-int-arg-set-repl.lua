                    redis.set_repl(12e345);
                