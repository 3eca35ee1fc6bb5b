"""Baseline model of wave-2 attrition from wave-1 paradata.

Splits data/train.csv into a fitting part and a validation part (fixed seed),
standardises the predictors on the fitting part, fits L2-penalised logistic
regressions and a nearest-centroid scorer, selects the model with the highest
validation AUROC and checks it against the pre-registered acceptance
criterion. The selected model's predicted dropout probabilities for the
replenishment-sample households in data/test.csv are written to
outputs/test_predictions.csv for scoring by the panel's methods board.

Run from the workspace root:  python3 scripts/attrition_model.py
"""

import csv
from pathlib import Path

import numpy as np

TRAIN = Path("data/train.csv")
TEST = Path("data/test.csv")
PREDICTIONS = Path("outputs/test_predictions.csv")
LABEL = "dropped_w2"
ID = "household_id"
SEED = 20250902
VALIDATION_FRACTION = 0.25
ACCEPTANCE_AUROC = 0.80


def read_table(path):
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def to_matrix(rows, names):
    return np.array([[float(row[name]) for name in names] for row in rows])


def auroc(y, score):
    """Mann-Whitney estimate with midranks for ties."""
    order = np.argsort(score, kind="mergesort")
    ranks = np.empty(len(score))
    sorted_scores = score[order]
    i = 0
    while i < len(score):
        j = i
        while j + 1 < len(score) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def fit_logistic(X, y, l2, steps=3000, lr=0.1):
    Xb = np.hstack([X, np.ones((len(X), 1))])
    w = np.zeros(Xb.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-Xb @ w))
        grad = Xb.T @ (p - y) / len(y)
        grad[:-1] += l2 * w[:-1]
        w -= lr * grad
    return lambda Z: 1 / (1 + np.exp(-np.hstack([Z, np.ones((len(Z), 1))]) @ w))


def fit_centroid(X, y):
    c0, c1 = X[y == 0].mean(axis=0), X[y == 1].mean(axis=0)
    def score(Z):
        margin = ((Z - c0) ** 2).sum(axis=1) - ((Z - c1) ** 2).sum(axis=1)
        return 1 / (1 + np.exp(-margin / 4))
    return score


def main():
    rows = read_table(TRAIN)
    names = [c for c in rows[0] if c not in (ID, LABEL)]
    X = to_matrix(rows, names)
    y = np.array([int(r[LABEL]) for r in rows])

    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(y))
    n_val = int(round(VALIDATION_FRACTION * len(y)))
    val_idx, fit_idx = order[:n_val], order[n_val:]
    mu, sd = X[fit_idx].mean(axis=0), X[fit_idx].std(axis=0)
    sd[sd == 0] = 1.0
    Xs = (X - mu) / sd

    candidates = {
        "logistic_l2_0.01": fit_logistic(Xs[fit_idx], y[fit_idx], 0.01),
        "logistic_l2_0.1": fit_logistic(Xs[fit_idx], y[fit_idx], 0.1),
        "logistic_l2_1.0": fit_logistic(Xs[fit_idx], y[fit_idx], 1.0),
        "nearest_centroid": fit_centroid(Xs[fit_idx], y[fit_idx]),
    }
    scores = {name: auroc(y[val_idx], model(Xs[val_idx])) for name, model in candidates.items()}
    best = max(scores, key=scores.get)

    print(f"n_fit: {len(fit_idx)}")
    print(f"n_validation: {len(val_idx)}")
    print(f"validation_dropout_rate: {y[val_idx].mean():.4f}")
    for name, score in scores.items():
        print(f"validation_auroc_{name}: {score:.4f}")
    print(f"selected_model: {best}")
    print(f"validation_auroc: {scores[best]:.4f}")
    verdict = "MET" if scores[best] >= ACCEPTANCE_AUROC else "NOT MET"
    print(f"acceptance_criterion_auroc_{ACCEPTANCE_AUROC:.2f}: {verdict}")

    test_rows = read_table(TEST)
    Xt = (to_matrix(test_rows, names) - mu) / sd
    probabilities = candidates[best](Xt)
    PREDICTIONS.parent.mkdir(parents=True, exist_ok=True)
    with PREDICTIONS.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([ID, "p_dropout"])
        for row, p in zip(test_rows, probabilities):
            writer.writerow([row[ID], f"{p:.4f}"])
    print(f"n_test_predictions: {len(test_rows)}")


if __name__ == "__main__":
    main()
