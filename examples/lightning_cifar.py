#!/usr/bin/env python3
"""A small CNN trained with PyTorch Lightning on a packed CIFAR dataset, fed by shardpack.DataLoader.

    ./scripts/python-env --test     # build/venv-torch (torch CPU, Lightning) and the module
                                    # for its Python in build-py311/
    PYTHONPATH=build-py311/python build/venv-torch/bin/python examples/lightning_cifar.py \
        DATASET [--steps 200] [--batch-size 128] [--threads 2] [--checkpoint-every 50] \
        [--out lightning-ckpt] [--resume lightning-ckpt/step=50.ckpt]

The LightningDataModule's train_dataloader() returns a shardpack.DataLoader.
Lightning finds its state_dict() / load_state_dict() and keeps the reader's
position in every checkpoint (checkpoint["loops"]["fit_loop"]["state_dict"]
["combined_loader"]): --resume goes on mid-epoch with exactly the batches an
uninterrupted run would have trained on. The module's training_step is what
it would be with a torch DataLoader: F.cross_entropy(self(images), labels).

Runs on CPU; with a GPU (accelerator="auto") the reader hands out CUDA
tensors (device=the trainer's device) and labels follow them. Each rank reads
its share: rank and world size come from the trainer.
"""
import os

import lightning as L
import shardpack
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import ModelCheckpoint

from train_cifar import CIFAR_MEAN, CIFAR_STD, arguments, small_cnn


class ShardpackCifar(L.LightningDataModule):
    """CIFAR from a shardpack dataset: augmented, normalized float32 NCHW batches."""

    def __init__(self, path, batch_size=128, threads=2, seed=0):
        super().__init__()
        self.path, self.batch_size, self.threads, self.seed = path, batch_size, threads, seed

    def train_dataloader(self):
        trainer = self.trainer
        device = trainer.strategy.root_device
        return shardpack.DataLoader(
            self.path, batch_size=self.batch_size, seed=self.seed, transform="cifar-train",
            dtype="float32", layout="NCHW", mean=CIFAR_MEAN, std=CIFAR_STD,
            threads=self.threads, rank=trainer.global_rank, world_size=trainer.world_size,
            device=str(device) if device.type == "cuda" else "cpu")


class Classifier(L.LightningModule):
    def __init__(self, classes=10, lr=0.05, log_every=20):
        super().__init__()
        self.save_hyperparameters()
        self.net = small_cnn(classes)

    def forward(self, images):
        return self.net(images)

    def training_step(self, batch, batch_idx):
        images, labels = batch
        loss = F.cross_entropy(self(images), labels)
        self.log("loss", loss, prog_bar=True)
        if self.global_step % self.hparams.log_every == 0:
            print(f"step {self.global_step} epoch {self.current_epoch} batch {batch_idx}: "
                  f"loss {loss.item():.3f}", flush=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9,
                               weight_decay=5e-4)


def main():
    p = arguments(__doc__, steps=200)
    p.add_argument("--checkpoint-every", type=int, default=50, help="steps between checkpoints")
    p.add_argument("--out", default="lightning-ckpt", help="checkpoint directory")
    p.add_argument("--resume", help="a checkpoint to go on from")
    args = p.parse_args()

    L.seed_everything(args.seed, verbose=False)
    data = ShardpackCifar(args.dataset, args.batch_size, args.threads, args.seed)
    model = Classifier(lr=args.lr, log_every=args.log_every)
    every = ModelCheckpoint(dirpath=args.out, filename="{step}",
                            every_n_train_steps=args.checkpoint_every, save_top_k=-1)
    trainer = L.Trainer(max_steps=args.steps, accelerator="auto", devices=1, logger=False,
                        callbacks=[every], enable_progress_bar=False, enable_model_summary=False)
    if args.resume:
        checkpoint = torch.load(args.resume, map_location="cpu", weights_only=False)
        reader = checkpoint["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]["reader"]
        print(f"resuming from {args.resume}: reader at epoch {reader['epoch']} batch "
              f"{reader['batch']}", flush=True)
    trainer.fit(model, datamodule=data, ckpt_path=args.resume)
    state = trainer.train_dataloader.state_dict()["reader"]
    print(f"done: {trainer.global_step} steps; reader at epoch {state['epoch']} batch "
          f"{state['batch']}; checkpoints in {os.path.abspath(args.out)}", flush=True)


if __name__ == "__main__":
    main()
