-- joinery.union_padded from outside the package: the delta has a column the snapshot lacks.
with

unioned as (
    {{ joinery.union_padded([ref('it_snapshot'), ref('it_delta')]) }}
)

select * from unioned
