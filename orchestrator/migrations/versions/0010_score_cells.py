"""score_cells: the runs counted by everything a score reads, kept up to date by triggers on runs, so the
dashboards read a few thousand cells instead of every run (issue #16); an index for median runtimes

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03 19:05:00

A future migration that rebuilds ``runs`` on SQLite (``batch_alter_table``) drops its triggers: it must
call ``install_triggers`` again (tests/test_scores.py checks that the cells equal a GROUP BY of the runs).
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

#: the columns of a cell, in key order: a score reads nothing else of a run (orchestrator/scoreboard.py Cell)
FACTS = ('batch_id', 'agent', 'model', 'condition', 'family', 'category', 'role', 'scenario_id', 'verdict',
         'pathology_recognised', 'completed', 'error_layer')
#: what the UPDATE trigger watches: the facts and the token counts (not status, heartbeat, ...)
WATCHED = FACTS + ('input_tokens', 'output_tokens')


def _key(row: str, dialect: str) -> str:
    """The cell's key from a row's facts (NULL spelled '~', so a queued run has a key too)."""
    parts = []
    for column in FACTS:
        value = f"{row}.{column}"
        if column in ('pathology_recognised', 'completed'):
            value = f"CAST({value} AS TEXT)"  # 'true'/'false' on PostgreSQL, '1'/'0' on SQLite
        parts.append(f"COALESCE({value}, '~')")
    return " || '|' || ".join(parts)


def _add(row: str, dialect: str) -> str:
    columns = ", ".join(FACTS)
    values = ", ".join(f"{row}.{c}" for c in FACTS)
    return (f"INSERT INTO score_cells (key, {columns}, runs, input_tokens, output_tokens) "
            f"VALUES ({_key(row, dialect)}, {values}, 1, COALESCE({row}.input_tokens, 0), "
            f"COALESCE({row}.output_tokens, 0)) "
            f"ON CONFLICT (key) DO UPDATE SET runs = score_cells.runs + 1, "
            f"input_tokens = score_cells.input_tokens + excluded.input_tokens, "
            f"output_tokens = score_cells.output_tokens + excluded.output_tokens;")


def _remove(row: str, dialect: str) -> str:
    return (f"UPDATE score_cells SET runs = runs - 1, input_tokens = input_tokens - COALESCE({row}.input_tokens, 0), "
            f"output_tokens = output_tokens - COALESCE({row}.output_tokens, 0) WHERE key = {_key(row, dialect)}; "
            f"DELETE FROM score_cells WHERE key = {_key(row, dialect)} AND runs <= 0;")


def install_triggers(dialect: str) -> None:
    watched = ", ".join(WATCHED)
    if dialect == 'postgresql':
        op.execute(f"""
CREATE OR REPLACE FUNCTION score_cells_apply() RETURNS trigger AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    {_remove('OLD', dialect)}
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    {_add('NEW', dialect)}
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql""")
        op.execute("CREATE TRIGGER runs_score_cells_insert AFTER INSERT OR DELETE ON runs "
                   "FOR EACH ROW EXECUTE FUNCTION score_cells_apply()")
        op.execute(f"CREATE TRIGGER runs_score_cells_update AFTER UPDATE OF {watched} ON runs "
                   "FOR EACH ROW EXECUTE FUNCTION score_cells_apply()")
        return
    op.execute(f"CREATE TRIGGER runs_score_cells_insert AFTER INSERT ON runs BEGIN {_add('NEW', dialect)} END")
    op.execute(f"CREATE TRIGGER runs_score_cells_delete AFTER DELETE ON runs BEGIN {_remove('OLD', dialect)} END")
    op.execute(f"CREATE TRIGGER runs_score_cells_update AFTER UPDATE OF {watched} ON runs "
               f"BEGIN {_remove('OLD', dialect)} {_add('NEW', dialect)} END")


def upgrade() -> None:
    op.create_table(
        'score_cells',
        sa.Column('key', sa.Text(), nullable=False),
        sa.Column('batch_id', sa.String(length=32), nullable=False),
        sa.Column('agent', sa.String(length=60), nullable=False),
        sa.Column('model', sa.String(length=200), nullable=False),
        sa.Column('condition', sa.String(length=40), nullable=False),
        sa.Column('family', sa.String(length=20), nullable=False),
        sa.Column('category', sa.String(length=40), nullable=False),
        sa.Column('role', sa.String(length=10), nullable=False),
        sa.Column('scenario_id', sa.String(length=100), nullable=False),
        sa.Column('verdict', sa.String(length=40), nullable=True),
        sa.Column('pathology_recognised', sa.Boolean(), nullable=True),
        sa.Column('completed', sa.Boolean(), nullable=True),
        sa.Column('error_layer', sa.String(length=20), nullable=True),
        sa.Column('runs', sa.Integer(), nullable=False),
        sa.Column('input_tokens', sa.BigInteger(), nullable=False),
        sa.Column('output_tokens', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('key'),
    )
    op.create_index('ix_score_cells_batch_id', 'score_cells', ['batch_id'])
    # the overview's median runtimes per agent × condition read this index in order, not every run's row
    op.create_index('ix_runs_runtime', 'runs', ['agent', 'model', 'condition', 'duration_s'])
    dialect = op.get_bind().dialect.name
    columns = ", ".join(FACTS)
    op.execute(f"INSERT INTO score_cells (key, {columns}, runs, input_tokens, output_tokens) "
               f"SELECT {_key('runs', dialect)}, {columns}, COUNT(*), SUM(COALESCE(input_tokens, 0)), "
               f"SUM(COALESCE(output_tokens, 0)) FROM runs GROUP BY {columns}")
    install_triggers(dialect)
    if dialect == 'postgresql':
        # every run added or finished rewrites a cell row: vacuum this small table after a thousand such
        # updates, not after a fifth of it has turned over (dead rows are what a dashboard read would scan)
        op.execute("ALTER TABLE score_cells SET (autovacuum_vacuum_scale_factor = 0.0, "
                   "autovacuum_vacuum_threshold = 1000, autovacuum_analyze_threshold = 1000)")


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == 'postgresql':
        op.execute("DROP TRIGGER IF EXISTS runs_score_cells_insert ON runs")
        op.execute("DROP TRIGGER IF EXISTS runs_score_cells_update ON runs")
        op.execute("DROP FUNCTION IF EXISTS score_cells_apply()")
    else:
        for name in ('insert', 'delete', 'update'):
            op.execute(f"DROP TRIGGER IF EXISTS runs_score_cells_{name}")
    op.drop_index('ix_runs_runtime', table_name='runs')
    op.drop_index('ix_score_cells_batch_id', table_name='score_cells')
    op.drop_table('score_cells')
