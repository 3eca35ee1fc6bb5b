"""One-hidden-layer network for concrete compressive strength.

Standardises the eight mix-design features and the target with the training
set's mean and standard deviation, trains a ReLU network (settings in
config/train.json: hidden units, learning rate, epoch budget, convergence
tolerance, seed) by full-batch gradient descent on the mean squared error, and
evaluates it on the held-out mixes in data/concrete_test.csv. Training is
declared converged when the training loss changes by less than the tolerance
(relative) over the last `window` epochs. The per-epoch training loss is
written to outputs/training_history.csv.

Run from the workspace root:  python3 scripts/train_mlp.py
"""

import csv
import json
import sys
from pathlib import Path

import numpy as np

TRAIN = Path("data/concrete_train.csv")
TEST = Path("data/concrete_test.csv")
SETTINGS = Path("config/train.json")
HISTORY = Path("outputs/training_history.csv")
TARGET = "strength_mpa"
DIVERGENCE_FACTOR = 1.0e4


def read_table(path):
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    names = [name for name in rows[0] if name != TARGET]
    X = np.array([[float(row[name]) for name in names] for row in rows])
    y = np.array([float(row[TARGET]) for row in rows])
    return names, X, y


def forward(params, X):
    W1, b1, w2, b2 = params
    hidden = np.maximum(X @ W1 + b1, 0.0)
    return hidden, hidden @ w2 + b2


def main():
    cfg = json.loads(SETTINGS.read_text())
    lr = float(cfg["learning_rate"])
    max_epochs = int(cfg["max_epochs"])
    tol = float(cfg["tolerance"])
    window = int(cfg["window"])
    hidden_units = int(cfg["hidden_units"])

    names, X, y = read_table(TRAIN)
    _, Xt, yt = read_table(TEST)
    mu, sd = X.mean(axis=0), X.std(axis=0)
    y_mu, y_sd = y.mean(), y.std()
    Xs, Xts = (X - mu) / sd, (Xt - mu) / sd
    ys = (y - y_mu) / y_sd

    rng = np.random.default_rng(int(cfg["seed"]))
    params = [
        rng.normal(0.0, 1.0 / np.sqrt(len(names)), (len(names), hidden_units)),
        np.zeros(hidden_units),
        rng.normal(0.0, 1.0 / np.sqrt(hidden_units), hidden_units),
        0.0,
    ]

    losses = []
    status = "budget"
    with np.errstate(over="ignore", invalid="ignore"):
        for epoch in range(1, max_epochs + 1):
            hidden, pred = forward(params, Xs)
            err = pred - ys
            loss = 0.5 * float(np.mean(err ** 2))
            losses.append(loss)
            if not np.isfinite(loss) or loss > DIVERGENCE_FACTOR * losses[0]:
                status = "diverged"
                break
            if epoch > window and abs(losses[-window - 1] - loss) < tol * losses[-window - 1]:
                status = "converged"
                break
            W1, b1, w2, b2 = params
            g_out = err / len(ys)
            g_hidden = np.outer(g_out, w2) * (hidden > 0.0)
            params = [
                W1 - lr * (Xs.T @ g_hidden),
                b1 - lr * g_hidden.sum(axis=0),
                w2 - lr * (hidden.T @ g_out),
                b2 - lr * g_out.sum(),
            ]

    HISTORY.parent.mkdir(parents=True, exist_ok=True)
    with HISTORY.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["epoch", "training_loss"])
        for epoch, loss in enumerate(losses, start=1):
            writer.writerow([epoch, f"{loss:.8e}"])

    epochs = len(losses)
    print(f"n_train: {len(y)}")
    print(f"n_test: {len(yt)}")
    print(f"hidden_units: {hidden_units}")
    print(f"learning_rate: {lr:.3f}")
    print(f"max_epochs: {max_epochs}")
    print(f"epochs_run: {epochs}")
    print(f"initial_training_loss: {losses[0]:.4f}")
    if status != "converged":
        print(f"final_training_loss: {losses[-1]:.4e}")
        print(f"training_status: did not converge after {epochs} epochs")
        print("convergence_criterion: NOT MET")
        return 1

    _, pred_train = forward(params, Xs)
    _, pred_test = forward(params, Xts)
    pred_train = pred_train * y_sd + y_mu
    pred_test = pred_test * y_sd + y_mu
    rmse_train = float(np.sqrt(np.mean((pred_train - y) ** 2)))
    rmse_test = float(np.sqrt(np.mean((pred_test - yt) ** 2)))
    mae_test = float(np.mean(np.abs(pred_test - yt)))
    r2_test = 1.0 - float(np.sum((pred_test - yt) ** 2) / np.sum((yt - yt.mean()) ** 2))
    print(f"final_training_loss: {losses[-1]:.6f}")
    print(f"training_status: converged after {epochs} epochs")
    print("convergence_criterion: MET")
    print(f"train_rmse_mpa: {rmse_train:.3f}")
    print(f"test_rmse_mpa: {rmse_test:.3f}")
    print(f"test_mae_mpa: {mae_test:.3f}")
    print(f"test_r2: {r2_test:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
