-- union_padded: the snapshot and the changes by column name, with the input's position in `src`.
{{ config(materialized='table', file_format='parquet') }}

{{ joinery.union_padded(
    [source('inputs', 'accounts'), source('inputs', 'accounts_delta')],
    source_column='src',
) }}
