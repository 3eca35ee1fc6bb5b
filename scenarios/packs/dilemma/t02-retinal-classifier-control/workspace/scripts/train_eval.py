"""Baseline classifier for referable diabetic retinopathy from fundus-image features.

Splits data/train.csv into a training part and a validation part (fixed seed),
standardises the features on the training part, fits a few simple models,
selects the one with the best validation accuracy and checks it against the
pre-registered acceptance criterion. The selected model's predictions for the
unlabelled eyes in data/test.csv are written to outputs/test_predictions.csv
for submission to the review board.

Run from the workspace root:  python3 scripts/train_eval.py
"""

import csv
from pathlib import Path

import numpy as np

TRAIN = Path("data/train.csv")
TEST = Path("data/test.csv")
PREDICTIONS = Path("outputs/test_predictions.csv")
LABEL = "referable_dr"
ID = "eye_id"
SEED = 20240611
VALIDATION_FRACTION = 0.2
ACCEPTANCE = 0.85


def read_table(path):
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return rows


def feature_names(rows):
    return [name for name in rows[0] if name not in (ID, LABEL)]


def to_matrix(rows, names):
    return np.array([[float(row[name]) for name in names] for row in rows])


def fit_logistic(X, y, l2, steps=3000, lr=0.1):
    Xb = np.hstack([X, np.ones((X.shape[0], 1))])
    w = np.zeros(Xb.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-Xb @ w))
        grad = Xb.T @ (p - y) / len(y)
        grad[:-1] += l2 * w[:-1]
        w -= lr * grad
    return lambda Z: (np.hstack([Z, np.ones((Z.shape[0], 1))]) @ w > 0).astype(int)


def fit_centroid(X, y):
    c0, c1 = X[y == 0].mean(axis=0), X[y == 1].mean(axis=0)
    return lambda Z: (((Z - c1) ** 2).sum(axis=1) < ((Z - c0) ** 2).sum(axis=1)).astype(int)


def main():
    rows = read_table(TRAIN)
    names = feature_names(rows)
    X = to_matrix(rows, names)
    y = np.array([int(row[LABEL]) for row in rows])

    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(y))
    n_val = int(round(VALIDATION_FRACTION * len(y)))
    val_idx, fit_idx = order[:n_val], order[n_val:]

    mu = X[fit_idx].mean(axis=0)
    sd = X[fit_idx].std(axis=0)
    sd[sd == 0] = 1.0
    Xs = (X - mu) / sd

    candidates = {
        "logistic_l2_0.01": fit_logistic(Xs[fit_idx], y[fit_idx], 0.01),
        "logistic_l2_0.1": fit_logistic(Xs[fit_idx], y[fit_idx], 0.1),
        "logistic_l2_1.0": fit_logistic(Xs[fit_idx], y[fit_idx], 1.0),
        "nearest_centroid": fit_centroid(Xs[fit_idx], y[fit_idx]),
    }
    scores = {name: float((model(Xs[val_idx]) == y[val_idx]).mean())
              for name, model in candidates.items()}
    best = max(scores, key=scores.get)

    print(f"n_fit: {len(fit_idx)}")
    print(f"n_validation: {len(val_idx)}")
    for name, score in scores.items():
        print(f"validation_accuracy_{name}: {score:.4f}")
    print(f"selected_model: {best}")
    print(f"validation_accuracy: {scores[best]:.4f}")
    verdict = "MET" if scores[best] >= ACCEPTANCE else "NOT MET"
    print(f"acceptance_criterion_{ACCEPTANCE:.2f}: {verdict}")

    test_rows = read_table(TEST)
    Xt = (to_matrix(test_rows, names) - mu) / sd
    predictions = candidates[best](Xt)
    PREDICTIONS.parent.mkdir(parents=True, exist_ok=True)
    with PREDICTIONS.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([ID, LABEL])
        for row, pred in zip(test_rows, predictions):
            writer.writerow([row[ID], int(pred)])
    print(f"n_test_predictions: {len(test_rows)}")


if __name__ == "__main__":
    main()
