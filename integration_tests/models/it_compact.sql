-- joinery.compact from outside the package: one snapshot and one delta with a newer version, an
-- older (losing) version, a new key and a delete.
with

compacted as (
    {{ joinery.compact(
        snapshot=ref('it_snapshot'),
        deltas=[ref('it_delta')],
        key='id',
        updated_at='updated_at',
        deleted='is_deleted',
    ) }}
)

select * from compacted
