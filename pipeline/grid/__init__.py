"""The paper grid on a SLURM cluster, back as DVC experiments (`python -m pipeline.grid`).

`submit` runs the stages every experiment shares once (a data job), then one array task per
experiment (`sbatch --array`, gated on the data job): each task runs `dvc exp run` of its
experiment in its own clone on the repository's DVC cache and pushes it to the git and DVC
remotes. `status` maps SLURM's states to experiments; `submit` again reruns only what failed
or is missing; `collect` pulls the experiments (`dvc exp pull`), after which `dvc exp show`,
`dvc metrics diff` and `stages.sweeps` compare them as if they had run here. README and
docs/paper-scale.md, "Running the grid on a cluster".
"""
