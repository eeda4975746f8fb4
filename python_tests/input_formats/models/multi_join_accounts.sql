-- multi_join: accounts left join transactions left join account changes on (region, acct_id).
{{ config(materialized='table', file_format='parquet') }}

{{ joinery.multi_join(
    inputs={
        'accounts': source('inputs', 'accounts'),
        'txns': source('inputs', 'txns'),
        'updates': source('inputs', 'accounts_delta'),
    },
    keys={
        'accounts': ['region', 'acct_id'],
        'txns': ['region', 'acct_id'],
        'updates': ['region', 'acct_id'],
    },
    join_type='left',
    select=[
        'join_key.region', 'join_key.acct_id', 'accounts.name', 'accounts.balance', 'txns.txn_id',
        'txns.amount', 'updates.batch', 'updates.attrs',
    ],
) }}
