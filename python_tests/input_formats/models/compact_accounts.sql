-- compact: the accounts snapshot and its changes; `attrs` and `is_deleted` are padded for snapshot rows.
{{ config(materialized='table', file_format='parquet') }}

{{ joinery.compact(
    snapshot=source('inputs', 'accounts'),
    deltas=[source('inputs', 'accounts_delta')],
    key=['region', 'acct_id'],
    deleted='is_deleted',
    loaded_at='batch',
) }}
