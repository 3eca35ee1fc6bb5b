"""adjudication on queue items; time spent on each phase; what an exported label needs (blind label,
checklist version, trajectory hash, source) on the annotations table

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03 07:40:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('queue_items') as batch:
        batch.add_column(sa.Column('adjudicated_label', sa.String(length=40), nullable=True))
        batch.add_column(sa.Column('adjudicated_by', sa.String(length=100), nullable=True))
        batch.add_column(sa.Column('adjudication_reason', sa.Text(), nullable=True))
        batch.add_column(sa.Column('adjudicated_at', sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table('assignments') as batch:
        batch.add_column(sa.Column('blind_seconds', sa.Float(), nullable=True))
        batch.add_column(sa.Column('checklist_seconds', sa.Float(), nullable=True))
    with op.batch_alter_table('annotations') as batch:
        batch.add_column(sa.Column('assignment_id', sa.String(length=32), nullable=True))
        batch.add_column(sa.Column('source', sa.String(length=20), nullable=False, server_default='cli'))
        batch.add_column(sa.Column('blind_label', sa.String(length=40), nullable=True))
        batch.add_column(sa.Column('checklist_version', sa.String(length=64), nullable=False, server_default=''))
        batch.add_column(sa.Column('trajectory_sha256', sa.String(length=64), nullable=False, server_default=''))
        batch.add_column(sa.Column('blind_seconds', sa.Float(), nullable=True))
        batch.add_column(sa.Column('checklist_seconds', sa.Float(), nullable=True))
        batch.create_index('ix_annotations_run_id', ['run_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('annotations') as batch:
        batch.drop_index('ix_annotations_run_id')
        for column in ('checklist_seconds', 'blind_seconds', 'trajectory_sha256', 'checklist_version', 'blind_label',
                       'source', 'assignment_id'):
            batch.drop_column(column)
    with op.batch_alter_table('assignments') as batch:
        batch.drop_column('checklist_seconds')
        batch.drop_column('blind_seconds')
    with op.batch_alter_table('queue_items') as batch:
        for column in ('adjudicated_at', 'adjudication_reason', 'adjudicated_by', 'adjudicated_label'):
            batch.drop_column(column)
