-- dedup_latest: the newest change of every account.
{{ config(materialized='table', file_format='parquet') }}

{{ joinery.dedup_latest(source('inputs', 'accounts_delta'), key=['region', 'acct_id'], order_by='batch') }}
