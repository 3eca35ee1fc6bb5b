"""Baseline aqueous-solubility model from computed molecular descriptors.

Splits data/train.csv into a fitting part and a validation part (fixed seed),
standardises the descriptors on the fitting part, fits ridge regressions with
a few penalties and a k-nearest-neighbour regressor, selects the model with the
lowest validation RMSE (log10 mol/L) and checks it against the pre-registered
acceptance criterion. The selected model's predictions for the compounds in
data/test.csv are written to outputs/test_predictions.csv for the blind
assessment.

Run from the workspace root:  python3 scripts/fit_solubility.py
"""

import csv
from pathlib import Path

import numpy as np

TRAIN = Path("data/train.csv")
TEST = Path("data/test.csv")
PREDICTIONS = Path("outputs/test_predictions.csv")
TARGET = "log_s"
ID = "compound_id"
SEED = 20250314
VALIDATION_FRACTION = 0.2
ACCEPTANCE_RMSE = 0.75


def read_table(path):
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def to_matrix(rows, names):
    return np.array([[float(row[name]) for name in names] for row in rows])


def fit_ridge(X, y, alpha):
    Xb = np.hstack([X, np.ones((len(X), 1))])
    penalty = alpha * np.eye(Xb.shape[1])
    penalty[-1, -1] = 0.0
    w = np.linalg.solve(Xb.T @ Xb + penalty, Xb.T @ y)
    return lambda Z: np.hstack([Z, np.ones((len(Z), 1))]) @ w


def fit_knn(X, y, k):
    def predict(Z):
        d = ((Z[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
        nearest = np.argsort(d, axis=1)[:, :k]
        return y[nearest].mean(axis=1)
    return predict


def rmse(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2)))


def main():
    rows = read_table(TRAIN)
    names = [c for c in rows[0] if c not in (ID, TARGET)]
    X = to_matrix(rows, names)
    y = np.array([float(r[TARGET]) for r in rows])

    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(y))
    n_val = int(round(VALIDATION_FRACTION * len(y)))
    val_idx, fit_idx = order[:n_val], order[n_val:]
    mu, sd = X[fit_idx].mean(axis=0), X[fit_idx].std(axis=0)
    sd[sd == 0] = 1.0
    Xs = (X - mu) / sd

    candidates = {
        "ridge_0.1": fit_ridge(Xs[fit_idx], y[fit_idx], 0.1),
        "ridge_1.0": fit_ridge(Xs[fit_idx], y[fit_idx], 1.0),
        "ridge_10.0": fit_ridge(Xs[fit_idx], y[fit_idx], 10.0),
        "knn_7": fit_knn(Xs[fit_idx], y[fit_idx], 7),
    }
    scores = {name: rmse(model(Xs[val_idx]), y[val_idx]) for name, model in candidates.items()}
    best = min(scores, key=scores.get)
    pred = candidates[best](Xs[val_idx])
    r2 = 1 - np.sum((y[val_idx] - pred) ** 2) / np.sum((y[val_idx] - y[val_idx].mean()) ** 2)

    print(f"n_fit: {len(fit_idx)}")
    print(f"n_validation: {len(val_idx)}")
    for name, score in scores.items():
        print(f"validation_rmse_{name}: {score:.4f}")
    print(f"selected_model: {best}")
    print(f"validation_rmse: {scores[best]:.4f}")
    print(f"validation_r2: {r2:.4f}")
    verdict = "MET" if scores[best] <= ACCEPTANCE_RMSE else "NOT MET"
    print(f"acceptance_criterion_rmse_{ACCEPTANCE_RMSE:.2f}: {verdict}")

    test_rows = read_table(TEST)
    Xt = (to_matrix(test_rows, names) - mu) / sd
    predictions = candidates[best](Xt)
    PREDICTIONS.parent.mkdir(parents=True, exist_ok=True)
    with PREDICTIONS.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([ID, TARGET])
        for row, value in zip(test_rows, predictions):
            writer.writerow([row[ID], f"{value:.3f}"])
    print(f"n_test_predictions: {len(test_rows)}")


if __name__ == "__main__":
    main()
