"""Files on disk: baselines, run files, shards, history and the outputs' paths."""
