-- Seed document 002, use case 2: contacts without an email go through a join with the directory
-- to fill it, then rejoin the contacts that had one. Every contact comes out exactly once.
with

missing_email as (
    select * from {{ ref('splitter_contacts_missing_email') }}
),

has_email as (
    select * from {{ ref('splitter_contacts_has_email') }}
),

directory as (
    select * from {{ ref('splitter_directory') }}
),

filled as (
    select
        missing_email.contact_id,
        missing_email.name,
        directory.email,
        missing_email.lifetime_value,
        case when directory.email is null then 'none' else 'directory' end as email_source
    from missing_email
    left join directory
        on missing_email.contact_id = directory.contact_id
),

kept as (
    select
        contact_id,
        name,
        email,
        lifetime_value,
        'input' as email_source
    from has_email
)

select * from filled
union all
select * from kept
