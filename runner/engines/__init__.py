"""The engines that answer measured requests: building llama-server, running it, and the
in-process llama-cpp-python engine, all behind one session interface."""
