"""The seed guides' Lightning job, shrunk: Trainer(accelerator="gpu", devices=1, num_nodes=WORLD_SIZE,
strategy="ddp") over a tiny model for two steps, each process a node (NODE_RANK, LOCAL_RANK=0,
MASTER_ADDR/MASTER_PORT: Lightning's own environment). With GPUCTS_SEED_PREFLIGHT=1 the Trainer gets
gpucts's preflight callback, as a user adds it."""
import os

import torch

try:
    import lightning.pytorch as pl
except ImportError:  # the older package name
    import pytorch_lightning as pl


class Tiny(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)

    def training_step(self, batch, _):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    nodes = int(os.environ["WORLD_SIZE"])
    callbacks = []
    if os.environ.get("GPUCTS_SEED_PREFLIGHT") == "1":
        from gpucts_preflight.lightning import GpuctsPreflight
        callbacks.append(GpuctsPreflight())
    data = torch.utils.data.TensorDataset(torch.randn(32, 8), torch.randn(32, 1))
    trainer = pl.Trainer(accelerator="gpu", devices=1, num_nodes=nodes, strategy="ddp", max_steps=2,
                         callbacks=callbacks, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Tiny(), torch.utils.data.DataLoader(data, batch_size=8))
    print("rank %d: Lightning fit done" % trainer.global_rank, flush=True)


if __name__ == "__main__":
    main()
