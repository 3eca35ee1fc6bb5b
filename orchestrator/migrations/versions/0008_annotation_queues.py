"""annotation queues, items, assignments (leases and two-phase labels) and their append-only history

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 17:10:00
"""
from __future__ import annotations

from datetime import datetime, timezone

from alembic import op
import sqlalchemy as sa


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'annotation_queues',
        sa.Column('id', sa.String(length=32), nullable=False),
        sa.Column('name', sa.String(length=100), nullable=False),
        sa.Column('annotators_per_item', sa.Integer(), nullable=False),
        sa.Column('overlap', sa.Float(), nullable=False),
        sa.Column('gold_rate', sa.Float(), nullable=False),
        sa.Column('lease_minutes', sa.Integer(), nullable=False),
        sa.Column('blinded', sa.Boolean(), nullable=False),
        sa.Column('is_default', sa.Boolean(), nullable=False),
        sa.Column('selection', sa.JSON(), nullable=False),
        sa.Column('created_by', sa.String(length=100), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('name'),
    )
    op.create_table(
        'queue_items',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('queue_id', sa.String(length=32), nullable=False),
        sa.Column('run_id', sa.String(length=32), nullable=False),
        sa.Column('needed', sa.Integer(), nullable=False),
        sa.Column('gold_label', sa.String(length=40), nullable=True),
        sa.Column('added_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('completed_at', sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['queue_id'], ['annotation_queues.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('queue_id', 'run_id', name='uq_queue_items_queue_run'),
    )
    op.create_index(op.f('ix_queue_items_queue_id'), 'queue_items', ['queue_id'], unique=False)
    op.create_table(
        'assignments',
        sa.Column('id', sa.String(length=32), nullable=False),
        sa.Column('item_id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.String(length=32), nullable=False),
        sa.Column('state', sa.String(length=20), nullable=False),
        sa.Column('leased_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('blind_label', sa.String(length=40), nullable=True),
        sa.Column('blind_evidence', sa.JSON(), nullable=False),
        sa.Column('blind_note', sa.Text(), nullable=False),
        sa.Column('committed_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('final_label', sa.String(length=40), nullable=True),
        sa.Column('checklist', sa.JSON(), nullable=False),
        sa.Column('note', sa.Text(), nullable=False),
        sa.Column('submitted_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('skip_reason', sa.Text(), nullable=False),
        sa.Column('trajectory_sha256', sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(['item_id'], ['queue_items.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('item_id', 'user_id', name='uq_assignments_item_user'),
    )
    op.create_index(op.f('ix_assignments_item_id'), 'assignments', ['item_id'], unique=False)
    op.create_index(op.f('ix_assignments_user_id'), 'assignments', ['user_id'], unique=False)
    op.create_table(
        'annotation_history',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('actor', sa.String(length=100), nullable=False),
        sa.Column('run_id', sa.String(length=32), nullable=False),
        sa.Column('assignment_id', sa.String(length=32), nullable=True),
        sa.Column('action', sa.String(length=30), nullable=False),
        sa.Column('before', sa.JSON(), nullable=False),
        sa.Column('after', sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index(op.f('ix_annotation_history_run_id'), 'annotation_history', ['run_id'], unique=False)
    # the default queue exists from the start, so judges on several workers never race to create it
    queues = sa.table(
        'annotation_queues', sa.column('id', sa.String), sa.column('name', sa.String),
        sa.column('annotators_per_item', sa.Integer), sa.column('overlap', sa.Float), sa.column('gold_rate', sa.Float),
        sa.column('lease_minutes', sa.Integer), sa.column('blinded', sa.Boolean), sa.column('is_default', sa.Boolean),
        sa.column('selection', sa.JSON), sa.column('created_by', sa.String),
        sa.column('created_at', sa.DateTime(timezone=True)))
    op.bulk_insert(queues, [{
        'id': 'default', 'name': 'review', 'annotators_per_item': 2, 'overlap': 1.0, 'gold_rate': 0.0,
        'lease_minutes': 15, 'blinded': True, 'is_default': True, 'selection': {}, 'created_by': 'migration',
        'created_at': datetime(2026, 12, 2, tzinfo=timezone.utc)}])


def downgrade() -> None:
    op.drop_index(op.f('ix_annotation_history_run_id'), table_name='annotation_history')
    op.drop_table('annotation_history')
    op.drop_index(op.f('ix_assignments_user_id'), table_name='assignments')
    op.drop_index(op.f('ix_assignments_item_id'), table_name='assignments')
    op.drop_table('assignments')
    op.drop_index(op.f('ix_queue_items_queue_id'), table_name='queue_items')
    op.drop_table('queue_items')
    op.drop_table('annotation_queues')
