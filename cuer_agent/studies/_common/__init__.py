"""What the studies share: running an agent over a data set, question pools, recorded run
configs, the shared summary cells."""
