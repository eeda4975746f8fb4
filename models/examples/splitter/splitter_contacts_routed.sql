-- The router: contacts without a usable email go to port missing_email, the rest to has_email.
{{ config(materialized='table', file_format='parquet') }}

{{ joinery.route(
    ref('splitter_contacts'),
    ports=[{'name': 'missing_email', 'when': "nullif(trim(email), '') is null"}],
    default_port='has_email'
) }}
