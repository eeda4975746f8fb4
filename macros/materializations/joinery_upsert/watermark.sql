{#- The watermark the model's compile recorded (joinery.record_watermark, macros/common/model_state.sql:
    compact's loaded_at), which the commit stores as `joinery.watermark` with the rows, so the next
    run reads it with one metastore call instead of scanning the table. -#}

{% macro upsert_watermark_to_derive(recorded) %}
    {#- For a recorded watermark to derive (`{"column": ..., "value": null, "floor": ...}`: compact's
        full compactions, which cannot know the value before they run), what the commit stores instead:
        the newest value of `column` among the changed rows, at least `floor` (upsert_validate_changes
        reads it in its pass over them). {'column', 'floor', 'recorded': the parsed watermark};
        none when the watermark has its value, or there is none. -#}
    {% set parsed = fromjson(recorded) if recorded else none %}
    {% if parsed is not mapping or parsed.get('value') is not none or parsed.get('column') is not string %}
        {{ return(none) }}
    {% endif %}
    {{ return({'column': parsed['column'], 'floor': parsed['floor'] if parsed.get('floor') is string else none,
        'recorded': parsed}) }}
{% endmacro %}


{% macro upsert_derived_watermark(newest_of, newest) %}
    {#- The `joinery.watermark` a commit stores for a watermark to derive (upsert_watermark_to_derive):
        the recorded watermark with `newest` as its value and without its floor; its other fields (compact's
        `snapshot`) as they are. '' when `newest` is none. -#}
    {% if newest is none %}
        {{ return('') }}
    {% endif %}
    {% set stored = {} %}
    {% for name, value in newest_of.recorded.items() if name not in ['value', 'floor'] %}
        {% do stored.update({name: value}) %}
    {% endfor %}
    {% do stored.update({'value': newest}) %}
    {{ return(tojson(stored)) }}
{% endmacro %}


{% macro upsert_store_unchanged_watermark(target_sql, properties, watermark_text) %}
    {#- A run that changed no row commits nothing, yet its SELECT read up to a watermark (and compact's
        may have compared a new snapshot in full and found nothing to change): store what the commit
        would have stored, so that the next run does not read the same rows or compare the same
        snapshot again. Only when it differs from the stored value. -#}
    {% set stored = properties.get('joinery.watermark') or '' %}
    {% if watermark_text == '' or (stored != '' and fromjson(stored) == fromjson(watermark_text)) %}
        {{ return(none) }}
    {% endif %}
    {% do joinery.upsert_write_properties(target_sql, {'watermark': watermark_text}) %}
{% endmacro %}
