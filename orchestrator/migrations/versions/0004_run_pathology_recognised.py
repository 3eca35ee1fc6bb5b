"""runs.pathology_recognised: whether a trap run named its pathology

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 13:50:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('pathology_recognised', sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_column('pathology_recognised')
